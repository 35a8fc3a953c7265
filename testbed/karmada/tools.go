//go:build tools

// The binaries this module builds (tools/build_test_servers.py).
package tools

import (
	_ "github.com/karmada-io/karmada/cmd/controller-manager"
	_ "github.com/karmada-io/karmada/cmd/webhook"
)
