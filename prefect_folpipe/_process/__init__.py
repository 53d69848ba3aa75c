"""Process helpers every stage shares: the garbage collector around a load, memoised values,
safe reads and whole writes of files."""
