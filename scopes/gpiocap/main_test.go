package gpiocap_test

import (
	"testing"

	"github.com/hilrig/hilrig/internal/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }
