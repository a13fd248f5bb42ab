data = "sweep-2-efficiency.dat"
set title "sweep of resnet50.json: scaling efficiency against workers"
set xlabel "workers"
set ylabel "images/s per GPU / one GPU alone (%)"
set grid ytics
set logscale x 2
set xrange [0.869565217:73.6]
set grid xtics
set key bottom left font ",9" spacing 0.9
set yrange [0:115]
set terminal svg size 800,600 dynamic noenhanced
set output "sweep-2-efficiency.svg"
plot 100 title "linear scaling" with lines dt 2 lc rgb "#888888", data index 0 using 1:2 with linespoints pt 7 dt 1 lc rgb "#4e79a7" title "ps, bandwidth 1Gbps", data index 1 using 1:2 with linespoints pt 7 dt 1 lc rgb "#f28e2b" title "ralp, bandwidth 1Gbps", data index 2 using 1:2 with linespoints pt 7 dt 1 lc rgb "#59a14f" title "allreduce, bandwidth 1Gbps", data index 3 using 1:2 with linespoints pt 9 dt 2 lc rgb "#4e79a7" title "ps, bandwidth 10Gbps", data index 4 using 1:2 with linespoints pt 9 dt 2 lc rgb "#f28e2b" title "ralp, bandwidth 10Gbps", data index 5 using 1:2 with linespoints pt 9 dt 2 lc rgb "#59a14f" title "allreduce, bandwidth 10Gbps", data index 6 using 1:2 with linespoints pt 11 dt 3 lc rgb "#4e79a7" title "ps, bandwidth 25Gbps", data index 7 using 1:2 with linespoints pt 11 dt 3 lc rgb "#f28e2b" title "ralp, bandwidth 25Gbps", data index 8 using 1:2 with linespoints pt 11 dt 3 lc rgb "#59a14f" title "allreduce, bandwidth 25Gbps"
set terminal pngcairo size 800,600 noenhanced
set output "sweep-2-efficiency.png"
replot
set output
