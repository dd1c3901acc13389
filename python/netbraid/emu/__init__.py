"""The emu backend: real Linux stacks in network namespaces, joined by
netbraid-linkemu (the project's user-space link emulator).

- platform: what this machine allows (root, namespaces, TUN, tools) and why not
- registry: run-unique names, the record of what a run created, cleanup
- netns:    thin helpers around ip(8) and sysctl(8)
- linkemu:  starting and stopping the link emulator process
- topology: namespaces, devices, addresses and routes from a resolved scenario
- traffic:  iperf3 (TCP, MPTCP) and the UDP generator, measured
- udpgen:   entry point of the UDP CBR / on-off sender and receiver (Rust; run inside namespaces)
- backend:  one run of one resolved scenario, in the simulator's result schema
"""
