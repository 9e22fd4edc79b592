#!/usr/bin/env python3
"""Writes Tunebench's bundled synthetic text: a pretraining corpus of short templated stories and facts,
and an Alpaca-format instruct dataset teaching three visible skills (capital cities, reversing words,
adding small numbers). Python standard library only; output depends only on --seed (own PRNG, so it
does not change with Python's `random` implementation).

usage: generate_text.py --corpus OUT.txt --instruct OUT.json --spm-text OUT.txt [--seed N]
"""
import argparse
import json

MASK64 = (1 << 64) - 1


class SplitMix64:
    """A tiny, fully specified PRNG (Steele et al.'s SplitMix64)."""

    def __init__(self, seed):
        self.state = seed & MASK64

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK64
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        return z ^ (z >> 31)

    def below(self, n):
        return self.next() % n

    def pick(self, items):
        return items[self.below(len(items))]

    def chance(self, percent):
        return self.below(100) < percent


NAMES = [("Tom", "he"), ("Lily", "she"), ("Ben", "he"), ("Mia", "she"), ("Sam", "he"), ("Anna", "she"),
         ("Max", "he"), ("Zoe", "she"), ("Leo", "he"), ("Emma", "she"), ("Jack", "he"), ("Lucy", "she"),
         ("Finn", "he"), ("Rosa", "she"), ("Omar", "he"), ("Nora", "she"), ("Ivan", "he"), ("Maya", "she")]
CREATURES = ["a little boy", "a little girl", "a small cat", "a brown dog", "a tiny bird", "a happy frog",
             "a big bear", "a quiet mouse", "a brave rabbit", "a young fox", "a kind duck", "a curious owl"]
PLACES = ["the park", "the garden", "the forest", "the beach", "the farm", "the river", "the old house",
          "the school", "the market", "the hill", "the lake", "the library", "the zoo", "the field"]
HOMES = ["near a big forest", "in a small village", "by the sea", "in a busy town", "on a green hill",
         "next to a river", "in a little red house", "on a quiet street"]
OBJECTS = ["a red ball", "a blue kite", "a shiny stone", "a yellow hat", "a green apple", "an old book",
           "a toy boat", "a small box", "a white feather", "a silver key", "a warm scarf", "a paper map",
           "a wooden spoon", "a big leaf", "a sweet cake", "a glass jar"]
FRIENDS = ["a friendly dog", "an old turtle", "a funny monkey", "a gentle horse", "a clever crow",
           "a sleepy cat", "a tall giraffe", "a little duck", "a wise owl", "a busy bee"]
FEELINGS = ["happy", "sad", "scared", "excited", "tired", "curious", "proud", "surprised", "calm", "brave"]
WEATHER = ["The sun was bright.", "It was a rainy day.", "The wind was cold.", "The sky was blue.",
           "Snow covered the ground.", "It was a warm and sunny morning.", "Grey clouds filled the sky."]
ACTIONS = ["played a game", "sang a song", "built a tower", "drew a picture", "shared a snack",
           "looked at the stars", "read a story", "planted a seed", "ran a race", "made a sandcastle"]
LESSONS = ["It is good to share.", "Friends help each other.", "Being kind makes everyone happy.",
           "Listening is important.", "Trying again is brave.", "Small things can be special.",
           "Saying sorry makes things better.", "Home is where your family is."]

CAPITALS = [("France", "Paris"), ("Germany", "Berlin"), ("Italy", "Rome"), ("Spain", "Madrid"),
            ("Portugal", "Lisbon"), ("Japan", "Tokyo"), ("China", "Beijing"), ("India", "New Delhi"),
            ("Egypt", "Cairo"), ("Kenya", "Nairobi"), ("Canada", "Ottawa"), ("Mexico", "Mexico City"),
            ("Brazil", "Brasilia"), ("Argentina", "Buenos Aires"), ("Peru", "Lima"), ("Chile", "Santiago"),
            ("Russia", "Moscow"), ("Poland", "Warsaw"), ("Greece", "Athens"), ("Turkey", "Ankara"),
            ("Norway", "Oslo"), ("Sweden", "Stockholm"), ("Finland", "Helsinki"), ("Denmark", "Copenhagen"),
            ("Ireland", "Dublin"), ("Austria", "Vienna"), ("Hungary", "Budapest"), ("Australia", "Canberra"),
            ("Thailand", "Bangkok"), ("Vietnam", "Hanoi"), ("Nigeria", "Abuja"), ("Ghana", "Accra"),
            ("Morocco", "Rabat"), ("Cuba", "Havana"), ("Colombia", "Bogota"), ("Iran", "Tehran")]
WORDS = ["red", "blue", "green", "cat", "dog", "bird", "sun", "moon", "tree", "book", "cake", "milk",
         "fish", "star", "rain", "snow", "ship", "car", "hat", "box", "apple", "river", "stone", "house",
         "happy", "small", "big", "fast", "slow", "bright", "cold", "warm", "one", "two", "three", "door"]
NUMBER_WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"]


def cap(s):
    return s[0].upper() + s[1:]


def story(rng):
    name, pronoun = rng.pick(NAMES)
    creature = rng.pick(CREATURES)
    place = rng.pick(PLACES)
    thing = rng.pick(OBJECTS)
    friend = rng.pick(FRIENDS)
    feeling = rng.pick(FEELINGS)
    s = []
    opening = rng.below(3)
    if opening == 0:
        s.append(f"Once upon a time, there was {creature} named {name}.")
    elif opening == 1:
        s.append(f"{name} was {creature} who lived {rng.pick(HOMES)}.")
    else:
        s.append(f"One day, {name} woke up early.")
    if rng.chance(60):
        s.append(rng.pick(WEATHER))
    s.append(f"{cap(pronoun)} went to {place} and found {thing}.")
    s.append(f"{name} felt {feeling}.")
    if rng.chance(70):
        s.append(f"Then {name} met {friend}.")
        s.append(f"They {rng.pick(ACTIONS)} together.")
    if rng.chance(40):
        country, city = rng.pick(CAPITALS)
        s.append(f"{cap(friend)} told {name} about {city}, the capital of {country}.")
    if rng.chance(30):
        a, b = rng.below(6), rng.below(5)
        s.append(f"{name} counted {NUMBER_WORDS[a]} birds and {NUMBER_WORDS[b]} ducks, "
                 f"so there were {NUMBER_WORDS[a + b]} in all.")
    if rng.chance(50):
        s.append(f"At the end of the day, {name} went home with {thing}.")
    s.append(rng.pick(LESSONS))
    return " ".join(s)


def fact(rng):
    kind = rng.below(3)
    if kind == 0:
        country, city = rng.pick(CAPITALS)
        return f"The capital of {country} is {city}. {city} is a city in {country}."
    if kind == 1:
        a, b = rng.below(50), rng.below(50)
        return f"{a} plus {b} is {a + b}. {b} plus {a} is also {a + b}."
    words = [rng.pick(WORDS) for _ in range(3 + rng.below(3))]
    return f"The words {' '.join(words)} in reverse order are {' '.join(reversed(words))}."


def corpus(rng, documents):
    return [story(rng) if rng.chance(80) else fact(rng) for _ in range(documents)]


def instruct_rows(rng, rows):
    out = []
    for i in range(rows):
        task = i % 3
        if task == 0:
            country, city = rng.pick(CAPITALS)
            question = rng.pick([f"What is the capital of {country}?", f"Name the capital city of {country}.",
                                 f"Which city is the capital of {country}?"])
            out.append({"instruction": question, "input": "", "output": f"The capital of {country} is {city}."})
        elif task == 1:
            words = [rng.pick(WORDS) for _ in range(3 + rng.below(3))]
            out.append({"instruction": "Reverse the order of the words.", "input": " ".join(words),
                        "output": " ".join(reversed(words))})
        else:
            a, b = rng.below(20), rng.below(20)
            out.append({"instruction": "Add the two numbers.", "input": f"{a} + {b}",
                        "output": f"{a} + {b} = {a + b}"})
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--corpus", required=True)
    parser.add_argument("--instruct", required=True)
    parser.add_argument("--spm-text", required=True, help="text to train the tokenizer on")
    parser.add_argument("--seed", type=int, default=20240611)
    parser.add_argument("--documents", type=int, default=2400)
    parser.add_argument("--rows", type=int, default=2100)
    args = parser.parse_args()

    docs = corpus(SplitMix64(args.seed), args.documents)
    rows = instruct_rows(SplitMix64(args.seed + 1), args.rows)
    with open(args.corpus, "w", encoding="utf-8", newline="\n") as f:
        f.write("\n".join(docs) + "\n")
    with open(args.instruct, "w", encoding="utf-8", newline="\n") as f:
        # One row a line inside the array keeps `file:line` messages meaningful.
        f.write("[\n" + ",\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n]\n")
    # The tokenizer also sees the Alpaca template words and the dataset text.
    prompt = ("Below is an instruction that describes a task, paired with an input that provides further "
              "context. Write a response that appropriately completes the request.")
    with open(args.spm_text, "w", encoding="utf-8", newline="\n") as f:
        f.write("\n".join(docs) + "\n")
        for r in rows:
            f.write(f"{prompt}\n### Instruction:\n{r['instruction']}\n### Input:\n{r['input']}\n"
                    f"### Response:\n{r['output']}\n")


if __name__ == "__main__":
    main()
