package gpiocap_test

import (
	"testing"

	"github.com/hilrig/hilrig/scopes/scopetest"
)

func TestMain(m *testing.M) { scopetest.Main(m) }
