//go:build race

package clientip

const raceEnabled = true
