# Per-flow counters from an ns-2 trace, over [6, 6 + m): data packets the
# source node sent, packets and bytes the destination node received, first
# arrivals of each sequence number (goodput), and drops anywhere.
# Output: fid kind sent received bytes first_arrivals drops
$5 == "tcp" || $5 == "exp" {
    split($9, src, "."); split($10, dst, ".")
    f = $8; kind[f] = $5; inside = ($2 >= 6 && $2 < 6 + m)
    if ($1 == "+" && $3 == src[1]) { if (inside) sent[f]++ }
    else if ($1 == "r" && $4 == dst[1]) {
        if (!((f, $11) in seen)) { seen[f, $11] = 1; if (inside) first[f]++ }
        if (inside) { received[f]++; bytes[f] += $6 }
    }
    else if ($1 == "d" && inside) drops[f]++
}
END {
    for (f in kind)
        printf "%s %s %d %d %d %d %d\n", f, (kind[f] == "tcp" ? "tcp" : "udp"), sent[f], received[f], bytes[f], first[f], drops[f]
}
