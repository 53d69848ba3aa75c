"""Process helpers every stage shares: the garbage collector around a load, memoised values."""
