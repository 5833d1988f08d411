package soakrun

import "errors"

// Sentinels; returned errors wrap them with context.
var (
	// ErrPlan: the soak plan (profile, durations, traffic mix) is unusable.
	ErrPlan = errors.New("soakrun: plan")
	// ErrFeed: an endpoint feeding the soak failed or vanished.
	ErrFeed = errors.New("soakrun: feed")
	// ErrCheckpoint: a window could not be written.
	ErrCheckpoint = errors.New("soakrun: checkpoint")
	// ErrBoardLost: a board stopped sending agent windows (hung, panicked,
	// lost its network) and could not be recovered.
	ErrBoardLost = errors.New("soakrun: board lost")
)
