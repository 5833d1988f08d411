package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBridgeUsage: `hilrig-peer bridge` reaches ros2/bridge: without
// --config, or with a --dds this build lacks, it is a usage mistake
// (exit 2) naming what is wrong.
func TestBridgeUsage(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"bridge"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "--config is required") {
		t.Errorf("no --config: exit %d, stderr %q", code, errb.String())
	}
	cfg := filepath.Join(t.TempDir(), "b.json")
	if err := os.WriteFile(cfg, []byte(`{"topics":[{"ros":{"name":"imu","type":"sensor_msgs/Imu"},"hilrig":{"topic":"imu","max_payload":1024}}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	errb.Reset()
	if code := run([]string{"bridge", "--config", cfg, "--dds", "nonesuch"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "no such peer") {
		t.Errorf("--dds nonesuch: exit %d, stderr %q", code, errb.String())
	}
}
