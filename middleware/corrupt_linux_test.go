package middleware_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/hilrig/hilrig/middleware"
)

// corruptChild is a helper role for the corruption tests (see TestCorrupt*).
func corruptChild(n *middleware.Node, c middleware.Contract, role string) error {
	return errors.New("todo")
}

var _ = context.Background
var _ = fmt.Sprint
var _ = os.Getpid
var _ = strings.Contains
var _ = time.Now
