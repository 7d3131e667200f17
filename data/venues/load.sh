#!/bin/sh
# Turns the TSV tables of this directory into a redis-cli --pipe file (RESP on stdout):
#   DEL of every key written, then
#   GEOADD venues <lon> <lat> <venue>          (venues.tsv)
#   SADD event:<event> <venue>                 (events.tsv)
#   SADD line:<line> <venue>                   (lines.tsv)
#   GEOADD stations <lon> <lat> <station>      (stations.tsv)
#
# Usage: sh data/venues/load.sh | redis-cli -p 6379 --pipe
#        sh data/venues/load.sh [dir] > venues.resp
set -eu
dir=${1:-$(dirname "$0")}
LC_ALL=C
export LC_ALL
awk -F '\t' '
function cmd(n, a,    i, s) {
    s = "*" n "\r\n"
    for (i = 1; i <= n; i++) s = s "$" length(a[i]) "\r\n" a[i] "\r\n"
    printf "%s", s
}
function del(key,    a) { a[1] = "DEL"; a[2] = key; cmd(2, a) }
FNR == 1 { next }                      # header line
$0 == "" { next }
{
    file = FILENAME; sub(/.*\//, "", file)
    if (file == "venues.tsv" || file == "stations.tsv") {
        key = (file == "venues.tsv") ? "venues" : "stations"
        if (!(key in seen)) { seen[key] = 1; del(key) }
        a[1] = "GEOADD"; a[2] = key; a[3] = $2; a[4] = $3; a[5] = $1; cmd(5, a)
    } else if (file == "events.tsv" || file == "lines.tsv") {
        key = ((file == "events.tsv") ? "event:" : "line:") $1
        if (!(key in seen)) { seen[key] = 1; del(key) }
        a[1] = "SADD"; a[2] = key; a[3] = $2; cmd(3, a)
    }
}
' "$dir/venues.tsv" "$dir/events.tsv" "$dir/lines.tsv" "$dir/stations.tsv"
