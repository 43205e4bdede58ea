//go:build tools

// Package tools pins the Compose CLI's main package in go.mod (the build tag keeps it out of any build);
// ../build.sh builds github.com/docker/compose/v5/cmd from this module.
package tools

import _ "github.com/docker/compose/v5/cmd"
