data = "simulate-1-traffic.dat"
set title "vgg16-1gbe-8w-b32: traffic per host and step"
set xlabel "host"
set ylabel "bytes per step (GB)"
set grid ytics
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.7 relative
set yrange [0:*]
set xtics rotate by -30 nomirror
set key outside right top
set terminal svg size 1290,600 dynamic noenhanced
set output "simulate-1-traffic.svg"
plot data using 2:xtic(1) title "ps in" lc rgb "#4e79a7" fs solid 0.85, '' using 3 title "ps out" lc rgb "#4e79a7" fs pattern 4, '' using 4 title "ralp-fc6 in" lc rgb "#f28e2b" fs solid 0.85, '' using 5 title "ralp-fc6 out" lc rgb "#f28e2b" fs pattern 4, '' using 6 title "ralp in" lc rgb "#59a14f" fs solid 0.85, '' using 7 title "ralp out" lc rgb "#59a14f" fs pattern 4, '' using 8 title "allreduce in" lc rgb "#e15759" fs solid 0.85, '' using 9 title "allreduce out" lc rgb "#e15759" fs pattern 4, '' using 10 title "hybrid-fc6 in" lc rgb "#76b7b2" fs solid 0.85, '' using 11 title "hybrid-fc6 out" lc rgb "#76b7b2" fs pattern 4
set terminal pngcairo size 1290,600 noenhanced
set output "simulate-1-traffic.png"
replot
set output
