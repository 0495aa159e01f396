package main

func main() { run() }
