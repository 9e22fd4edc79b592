// tunebench-cli: the headless front end (DESIGN.md "The CLI").
#include <iostream>

int main(int argc, char** argv) {
  (void)argc; (void)argv;
  std::cout << "tunebench-cli\n";
  return 0;
}
