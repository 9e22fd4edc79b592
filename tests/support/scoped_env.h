// setenv for the scope of one check; the variable's former value (or its absence) comes back after.
#pragma once

#include <cstdlib>
#include <optional>
#include <string>

struct ScopedEnv {
  std::string name;
  std::optional<std::string> before;
  ScopedEnv(const char* n, const std::string& value) : name(n) {
    if (const char* v = std::getenv(n)) before = v;
    ::setenv(n, value.c_str(), 1);
  }
  ~ScopedEnv() { before ? (void)::setenv(name.c_str(), before->c_str(), 1) : (void)::unsetenv(name.c_str()); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;
};
