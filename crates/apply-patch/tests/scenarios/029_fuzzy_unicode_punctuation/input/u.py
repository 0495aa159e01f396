# don’t touch — really
x = “quoted” value
