module github.com/edgellm/edgellm

go 1.23

require golang.org/x/sys v0.49.0 // indirect
