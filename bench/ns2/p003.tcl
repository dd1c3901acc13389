# Paper 003's topology in ns-2 (Debian's `ns2` package, ns-2.35), for
# checking netbraid against the simulator the paper used.
#
#   ns p003.tcl SEED MEASURE_S OUT SETTINGS RATE_MBPS [RATE_MBPS ...]
#
# SETTINGS is Tcl run before the agents are made (e.g. older defaults:
# "Agent/TCP set minrto_ 1"). Per-flow counters over [6 s, 6 s + MEASURE_S)
# go to OUT, one line per flow (see flows.awk).
set seed [lindex $argv 0]
set measure [lindex $argv 1]
set out [lindex $argv 2]
eval [lindex $argv 3]
set rates [lrange $argv 4 end]
set d [llength $rates]

global defaultRNG
$defaultRNG seed $seed
# per-packet round robin over equal-cost routes (needs DV routing)
Node set multiPath_ 1
set ns [new Simulator]
$ns rtproto DV
set here [file dirname [info script]]
set trace [open "|[list awk -v m=$measure -f [file join $here flows.awk] > $out]" w]
$ns trace-all $trace
Queue set limit_ 50

set r1 [$ns node]
set r2 [$ns node]
# ns-2 keeps one link per node pair, so each path has a middle node
foreach r $rates {
    set mid [$ns node]
    $ns duplex-link $r1 $mid ${r}Mb 5ms DropTail
    $ns duplex-link $mid $r2 ${r}Mb 5ms DropTail
}
# a source node on Router1 and its destination node on Router2
proc endpoints {} {
    global ns r1 r2
    set s [$ns node]
    set t [$ns node]
    $ns duplex-link $s $r1 100Mb 2ms DropTail
    $ns duplex-link $r2 $t 100Mb 2ms DropTail
    return [list $s $t]
}
for {set i 0} {$i < 10 * $d} {incr i} {
    lassign [endpoints] s t
    set tcp [new Agent/TCP]
    $tcp set fid_ [expr $i + 1]
    $tcp set window_ 20
    $tcp set packetSize_ 1000
    set sink [new Agent/TCPSink]
    $ns attach-agent $s $tcp
    $ns attach-agent $t $sink
    $ns connect $tcp $sink
    set ftp [new Application/FTP]
    $ftp attach-agent $tcp
    $ns at 0.0 "$ftp start"
}
for {set i 0} {$i < 2 * $d} {incr i} {
    lassign [endpoints] s t
    set udp [new Agent/UDP]
    $udp set fid_ [expr 1000 + $i]
    set sink [new Agent/Null]
    $ns attach-agent $s $udp
    $ns attach-agent $t $sink
    $ns connect $udp $sink
    set onoff [new Application/Traffic/Exponential]
    $onoff set packetSize_ 210
    $onoff set burst_time_ 0.02
    $onoff set idle_time_ 0.12
    $onoff set rate_ 1.5Mb
    $onoff attach-agent $udp
    $ns at 0.0 "$onoff start"
}
$ns at [expr 6.0 + $measure] "close $trace; exit 0"
$ns run
