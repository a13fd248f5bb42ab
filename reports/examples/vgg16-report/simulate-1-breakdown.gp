data = "simulate-1-breakdown.dat"
set title "vgg16-1gbe-8w-b32: where a worker's step goes"
set xlabel "strategy"
set ylabel "time per step, worker mean (s)"
set grid ytics
set style data histograms
set style histogram rowstacked
set style fill solid 0.85 border -1
set boxwidth 0.7 relative
set yrange [0:*]
set xtics rotate by -30 nomirror
set key outside right top
set terminal svg size 800,600 dynamic noenhanced
set output "simulate-1-breakdown.svg"
plot data using 2:xtic(1) title "compute" lc rgb "#4e79a7", '' using 3 title "communication" lc rgb "#f28e2b", '' using 4 title "waiting" lc rgb "#bab0ac"
set terminal pngcairo size 800,600 noenhanced
set output "simulate-1-breakdown.png"
replot
set output
