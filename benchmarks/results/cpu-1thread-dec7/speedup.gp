set terminal pngcairo size 1200,560 noenhanced
set output 'speedup.png'
set title 'speedup over the original model (higher is better), Intel(R) Xeon(R) Processor'
set datafile missing '-'
set style data histogram
set style histogram cluster gap 1
set style fill solid border -1
set ylabel 'speedup (x)'
set yrange [0:*]
set grid ytics
set xtics nomirror rotate by -25
set key outside bottom center horizontal
set arrow from graph 0, first 1 to graph 1, first 1 nohead dt 2
plot for [i=2:5] 'speedup.dat' using i:xtic(1) title columnheader(i)
