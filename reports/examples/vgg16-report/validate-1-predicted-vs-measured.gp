# ralp simulate against ralp cluster: step time
set title "ralp simulate against ralp cluster: step time"
set xlabel "measured step time (ms)"
set ylabel "predicted step time (ms)"
set logscale xy
set xrange [19.6380687:7344.68984]
set yrange [19.6380687:7344.68984]
set size ratio -1
set grid
set key top left
set terminal svg size 800,600 dynamic
set output "validate-1-predicted-vs-measured.svg"
plot x title "predicted = measured" with lines lc rgb "#444444", x*1.08 title "+-8%" with lines dt 2 lc rgb "#888888", x*0.92 notitle with lines dt 2 lc rgb "#888888", "validate-1-predicted-vs-measured.dat" index 0 using 1:2 title "ps" with points pt 7 ps 1.3, "validate-1-predicted-vs-measured.dat" index 1 using 1:2 title "ralp" with points pt 8 ps 1.3, "validate-1-predicted-vs-measured.dat" index 2 using 1:2 title "allreduce" with points pt 9 ps 1.3, "validate-1-predicted-vs-measured.dat" index 3 using 1:2 title "hybrid" with points pt 10 ps 1.3
set terminal pngcairo size 800,600
set output "validate-1-predicted-vs-measured.png"
replot
set output
