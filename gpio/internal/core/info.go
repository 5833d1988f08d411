package core

// LineInfo describes one line of a chip as `gpio ls` shows it.
type LineInfo struct {
	Offset    int
	Name      string // empty when the line is unnamed
	Consumer  string // holder's label; empty when free
	Used      bool
	Output    bool
	ActiveLow bool
	Drive     Drive
}

// ChipInfo describes one chip and its lines.
type ChipInfo struct {
	Name  string // "gpiochip0" or, for the simulated chip, "sim:NAME"
	Path  string // "/dev/gpiochip0" or the shared-memory file
	Label string
	Lines []LineInfo
}
