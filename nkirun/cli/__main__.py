from nkirun.cli import main

main()
