// The reference for bench/startup.cpp: a C++ program that does nothing, built with the same
// compiler and flags, whose start-up is the floor of any C++ executable's.
#include <iostream>

int main() { return std::cout.good() ? 0 : 1; }
