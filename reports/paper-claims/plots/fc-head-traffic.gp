# Bytes into ps-0 per step against the FC head's parameters (VGG-16, 8 workers, 10 Gbps).
set xlabel "FC head parameters (millions)"
set ylabel "bytes into ps-0 per step (MB)"
set logscale xy
set key top left
set grid
set termoption noenhanced
plot "fc-head-traffic.dat" using 1:2 with linespoints title "ps", \
     "" using 1:3 with linespoints title "ralp@fc6", \
     "" using 1:4 with linespoints title "hybrid@fc6"
