//go:build !race

package routes

const raceEnabled = false
