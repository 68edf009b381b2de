"""What the attacks draw on, none of it an attack: word lists and tokenising (``text``), WordNet,
part-of-speech tags, inflection, lexicon frequencies and polarity, the counter-fitted embedding
space, neighbour tables, sentence similarity, the label judge, and optional extras' install hints."""
