package swarm

import "slices"

// firstN returns the n first items of xs in the order less defines,
// sorted, reordering xs in place. It keeps the best n seen in a heap whose
// root is the worst of them, so it costs O(len(xs)·log n) rather than a full
// sort: the hosts pick a handful of tasks from thousands ready on every
// scheduling round.
func firstN[T any](xs []T, n int, less func(a, b T) bool) []T {
	if n <= 0 {
		return nil
	}
	if len(xs) <= n {
		slices.SortFunc(xs, cmpOf(less))
		return xs
	}
	top := xs[:n] // the heap lives in the front of xs
	worse := func(i, j int) bool { return less(top[j], top[i]) }
	down := func(i int) {
		for {
			c := 2*i + 1
			if c >= n {
				return
			}
			if c+1 < n && worse(c+1, c) {
				c++
			}
			if !worse(c, i) {
				return
			}
			top[i], top[c] = top[c], top[i]
			i = c
		}
	}
	for i := n/2 - 1; i >= 0; i-- {
		down(i)
	}
	for _, x := range xs[n:] {
		if less(x, top[0]) {
			top[0] = x
			down(0)
		}
	}
	slices.SortFunc(top, cmpOf(less))
	return top
}

// cmpOf turns a strict order into a comparison for slices.SortFunc.
func cmpOf[T any](less func(a, b T) bool) func(a, b T) int {
	return func(a, b T) int {
		switch {
		case less(a, b):
			return -1
		case less(b, a):
			return 1
		}
		return 0
	}
}
