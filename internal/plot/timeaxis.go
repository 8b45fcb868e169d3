package plot

import (
	"math"
	"time"
)

// timeAxis is a wall-clock X axis over Unix seconds vs: the data's range
// (widened by a second when it is one instant), ticks on round local
// times, at most about six of them.
func timeAxis(a Axis, vs []float64) axisScale {
	loc := a.Location
	if loc == nil {
		loc = time.UTC
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range vs {
		lo, hi = min(lo, v), max(hi, v)
	}
	if a.Max > a.Min {
		lo, hi = a.Min, a.Max
	}
	if len(vs) == 0 && !(a.Max > a.Min) {
		lo, hi = 0, 60
	}
	if hi-lo < 1 {
		lo, hi = lo-0.5, hi+0.5
	}
	// The tick intervals, in seconds.
	timeSteps := [...]float64{1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400}
	step := timeSteps[len(timeSteps)-1]
	for _, s := range timeSteps {
		if (hi-lo)/s <= 6 {
			step = s
			break
		}
	}
	// Round in local time: a tick every 15 minutes falls on :00, :15, ...
	_, off := time.Unix(int64(lo), 0).In(loc).Zone()
	first := math.Ceil((lo+float64(off))/step)*step - float64(off)
	var ticks []float64
	for t := first; t <= hi+1e-9 && len(ticks) < 100; t += step {
		ticks = append(ticks, t)
	}
	layout := "15:04:05"
	switch {
	case hi-lo > 86400:
		layout = "Jan 2 15:04"
	case step >= 60:
		layout = "15:04"
	}
	return axisScale{lo: lo, hi: hi, ticks: ticks, format: func(v float64) string {
		sec, frac := math.Modf(v)
		return time.Unix(int64(sec), int64(frac*1e9)).In(loc).Format(layout)
	}}
}
