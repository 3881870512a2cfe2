package main

import _ "github.com/k1s/k1s/internal/warm"

func main() {}
