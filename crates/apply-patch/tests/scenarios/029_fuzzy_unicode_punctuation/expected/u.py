# don’t touch — really
x = "plain"
