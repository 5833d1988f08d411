//go:build !unix

package lease

import (
	"context"
	"errors"
	"fmt"
)

func lockGuard(context.Context, string) (func(), error) {
	return nil, fmt.Errorf("lease: host lock: %w", errors.ErrUnsupported)
}

func pidAlive(int) bool { return false }
