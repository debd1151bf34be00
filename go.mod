module github.com/edgellm/edgellm

go 1.26.0

require (
	github.com/coreos/go-systemd/v22 v22.7.0
	golang.org/x/sys v0.49.0
	gopkg.in/yaml.v3 v3.0.1
)
