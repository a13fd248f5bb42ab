# Single-GPU training step: predicted against published
set title "Single-GPU training step: predicted against published"
set xlabel "published step (ms)"
set ylabel "predicted step (ms)"
set logscale xy
set xrange [123.871158:2478.11448]
set yrange [123.871158:2478.11448]
set size ratio -1
set grid
set key top left
set terminal svg size 800,600 dynamic
set output "predicted-vs-published.svg"
plot x title "predicted = measured" with lines lc rgb "#444444", x*1.1 title "+-10%" with lines dt 2 lc rgb "#888888", x*0.9 notitle with lines dt 2 lc rgb "#888888", "predicted-vs-published.dat" index 0 using 1:2 title "k80" with points pt 7 ps 1.3, "predicted-vs-published.dat" index 1 using 1:2 title "p100" with points pt 8 ps 1.3, "predicted-vs-published.dat" index 2 using 1:2 title "p100-pcie" with points pt 9 ps 1.3
set terminal pngcairo size 800,600
set output "predicted-vs-published.png"
replot
set output
