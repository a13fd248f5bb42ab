data = "simulate-1-cuts-ralp.dat"
set title "vgg16-1gbe-8w-b32, ralp: step time against the cut"
set xlabel "first layer of the head (cuts in the order simulated)"
set ylabel "simulated step time (s)"
set grid ytics
set xtics rotate by -60 nomirror
set key top right
set yrange [0:*]
set offsets 0.5, 0.5, 0, 0
set terminal svg size 800,600 dynamic noenhanced
set output "simulate-1-cuts-ralp.svg"
plot data using 1:3:xtic(int($0) % 1 == 0 ? stringcolumn(2) : "") with linespoints pt 7 lc rgb "#4e79a7" title "simulated"
set terminal pngcairo size 800,600 noenhanced
set output "simulate-1-cuts-ralp.png"
replot
set output
