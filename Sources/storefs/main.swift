print("storefs")
