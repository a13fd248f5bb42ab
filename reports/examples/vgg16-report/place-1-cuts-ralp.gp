data = "place-1-cuts-ralp.dat"
set title "vgg16-1gbe-8w-b32, ralp: step time against the cut"
set xlabel "first layer of the head (cuts ranked by the analytic model)"
set ylabel "step time (s)"
set grid ytics
set xtics rotate by -60 nomirror
set key top left
set yrange [0:*]
set offsets 0.5, 0.5, 0, 0
set terminal svg size 1080,600 dynamic noenhanced
set output "place-1-cuts-ralp.svg"
plot data using 1:3:xtic(int($0) % 1 == 0 ? stringcolumn(2) : "") with points pt 7 ps 0.6 lc rgb "#4e79a7" title "analytic", '' using 1:4 with points pt 6 ps 0.6 lc rgb "#4e79a7" title "analytic lower bound (estimate skipped)", '' using 1:5 with points pt 9 ps 1.6 lc rgb "#f28e2b" title "simulated"
set terminal pngcairo size 1080,600 noenhanced
set output "place-1-cuts-ralp.png"
replot
set output
