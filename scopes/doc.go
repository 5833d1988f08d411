// Package scopes is the rig's ground truth for wire-to-callback time: the
// consumer-side [Scope] interface that oscilloscopes and logic analyzers
// implement, the delay [Stats] they report (each statistic optional, never
// invented), the edge-pairing arithmetic shared by the software-side
// implementations, [CrossValidate], which compares a scope's statistics
// with the software latency statistics of the same messages, and
// [CompareDistributions] / [CrossValidateDelays], which compare the
// per-message delays (p50, p99, Kolmogorov–Smirnov distance) where the
// scope can fetch them.
//
// Drivers live in sub-packages: scopes/lxi (Tektronix, Keysight, Rigol,
// Siglent over a raw SCPI socket or VXI-11), scopes/sigrok (logic analyzers
// through sigrok-cli), scopes/gpiocap (a capture board's GPIO inputs with
// kernel edge timestamps), scopes/scopesim (a SCPI scope simulator on
// loopback) and scopes/scopetest (the conformance test every
// implementation passes).
package scopes
