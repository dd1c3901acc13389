# One HighSpeed TCP flow in ns-2 (Debian's `ns2` package, ns-2.35), for
# timing netbraid against it on the same scenario:
#
#   ns hstcp.tcl SEED LOSS DURATION_S
#
# a → r → b, 10 Gb/s and 25 ms per hop (100 ms round trip), random packet
# loss LOSS on a → r (or, with LOSS = @FILE, exactly the packets whose
# 0-based indices in a → r's transmission order FILE lists: ErrorModel/List,
# which counts from 0 as netbraid's `list` loss does), 100,000-packet
# drop-tail queues; Agent/TCP/Sack1 with
# windowOption_ 8 (RFC 3649) and a window that never binds; Agent/TCPSink/Sack1
# (an ACK per packet). Prints the sender's counters at the end.
set seed [lindex $argv 0]
set loss [lindex $argv 1]
set duration [lindex $argv 2]
global defaultRNG
$defaultRNG seed $seed
set ns [new Simulator]
set a [$ns node]
set r [$ns node]
set b [$ns node]
$ns duplex-link $a $r 10Gb 25ms DropTail
$ns duplex-link $r $b 10Gb 25ms DropTail
$ns queue-limit $a $r 100000
$ns queue-limit $r $b 100000
if {[string index $loss 0] == "@"} {
    set f [open [string range $loss 1 end]]
    set drops [read $f]
    close $f
    set em [new ErrorModel/List]
    $em droplist $drops
} else {
    set em [new ErrorModel]
    $em set rate_ $loss
    $em ranvar [new RandomVariable/Uniform]
}
$em unit pkt
$em drop-target [new Agent/Null]
$ns lossmodel $em $a $r
set tcp [new Agent/TCP/Sack1]
$tcp set windowOption_ 8
$tcp set window_ 10000000
$tcp set packetSize_ 1460
set sink [new Agent/TCPSink/Sack1]
$ns attach-agent $a $tcp
$ns attach-agent $b $sink
$ns connect $tcp $sink
set ftp [new Application/FTP]
$ftp attach-agent $tcp
$ns at 0 "$ftp start"
proc finish {} {
    global tcp
    puts "acked [$tcp set ack_] sent [$tcp set ndatapack_] rexmit [$tcp set nrexmitpack_] cwnd [$tcp set cwnd_]"
    exit 0
}
$ns at $duration "finish"
$ns run
