from gcjob.cli import main

main()
