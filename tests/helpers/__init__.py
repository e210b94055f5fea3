"""What only the tests share (the testing kit, `controller.testing`, is what the tests, the benchmarks and the
docs' scripts share): where things are (`paths`), and the helpers of the tests of one part or game."""
