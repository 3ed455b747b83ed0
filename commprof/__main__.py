from commprof.cli.app import console_main

console_main()
