n=$(cat count.txt 2>/dev/null || echo 0)
n=$((n + 1))
echo $n > count.txt
test $n -ge 3 && echo done > done.txt
