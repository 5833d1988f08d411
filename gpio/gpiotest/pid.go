package gpiotest

import "os"

func pidHash() int { return os.Getpid() }
