//go:build tools

// The binaries this module builds (tools/build_test_servers.py).
package tools

import (
	_ "helm.sh/helm/v3/cmd/helm"
)
