//go:build tools

// The binaries this module builds (tools/build_test_servers.py).
package tools

import (
	_ "go.etcd.io/etcd/server/v3"
)
