# Multi-GPU training step: predicted against published
set title "Multi-GPU training step: predicted against published"
set xlabel "published step (ms)"
set ylabel "predicted step (ms)"
set logscale xy
set xrange [157.376243:48560.8247]
set yrange [157.376243:48560.8247]
set size ratio -1
set grid
set key top left
set terminal svg size 800,600 dynamic
set output "multi-gpu-predicted-vs-published.svg"
plot x title "predicted = measured" with lines lc rgb "#444444", x*1.1 title "+-10%" with lines dt 2 lc rgb "#888888", x*0.9 notitle with lines dt 2 lc rgb "#888888", "multi-gpu-predicted-vs-published.dat" index 0 using 1:2 title "ideal" with points pt 7 ps 1.3, "multi-gpu-predicted-vs-published.dat" index 1 using 1:2 title "mpi-cpu" with points pt 8 ps 1.3, "multi-gpu-predicted-vs-published.dat" index 2 using 1:2 title "mpi-cpu (fit)" with points pt 9 ps 1.3, "multi-gpu-predicted-vs-published.dat" index 3 using 1:2 title "nccl" with points pt 10 ps 1.3, "multi-gpu-predicted-vs-published.dat" index 4 using 1:2 title "nccl (fit)" with points pt 11 ps 1.3, "multi-gpu-predicted-vs-published.dat" index 5 using 1:2 title "tf-grpc" with points pt 12 ps 1.3, "multi-gpu-predicted-vs-published.dat" index 6 using 1:2 title "tf-grpc (fit)" with points pt 7 ps 1.3, "multi-gpu-predicted-vs-published.dat" index 7 using 1:2 title "tf-grpc (out of scope)" with points pt 8 ps 1.3
set terminal pngcairo size 800,600
set output "multi-gpu-predicted-vs-published.png"
replot
set output
