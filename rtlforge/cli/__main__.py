from rtlforge.cli import main

main()
