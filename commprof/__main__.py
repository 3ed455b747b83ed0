from commprof.cli.app import main

main()
