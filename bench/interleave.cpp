// Whole-process A/B timing: runs two or more commands in turn, one run of
// each per round, and prints each one's median wall time. Interleaving keeps
// the machine's drift (which on a shared VM moves a block of runs by ±10 %)
// out of the comparison; hyperfine times each command in one block.
//   coload_interleave ROUNDS -- CMD ARGS... -- CMD ARGS... [-- ...]
// CMD is an absolute or relative path (no PATH search, no shell); stdout goes
// to /dev/null. Any run that fails stops the measurement.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

// One run's wall time in microseconds, fork to reaped exit; -1 on failure.
double run_once(const std::vector<char*>& argv) {
  auto start = Clock::now();
  pid_t child = fork();
  if (child < 0) return -1;
  if (child == 0) {
    int null = open("/dev/null", O_WRONLY);
    if (null < 0 || dup2(null, STDOUT_FILENO) < 0) _exit(126);
    execv(argv[0], argv.data());
    _exit(127);
  }
  int status = 0;
  if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return -1;
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
}

double percentile(std::vector<double> samples, double at) {
  std::sort(samples.begin(), samples.end());
  return samples[static_cast<std::size_t>(at * static_cast<double>(samples.size() - 1))];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4 || std::strcmp(argv[2], "--") != 0) {
    std::fprintf(stderr, "usage: %s ROUNDS -- CMD ARGS... -- CMD ARGS... [-- ...]\n", argv[0]);
    return 2;
  }
  const int rounds = std::atoi(argv[1]);
  std::vector<std::vector<char*>> commands(1);
  for (int i = 3; i < argc; ++i) {
    if (std::strcmp(argv[i], "--") == 0) {
      commands.emplace_back();
      continue;
    }
    commands.back().push_back(argv[i]);
  }
  for (auto& command : commands) {
    if (command.empty() || rounds < 1) {
      std::fprintf(stderr, "%s: ROUNDS must be positive and every command non-empty\n", argv[0]);
      return 2;
    }
    command.push_back(nullptr);
  }
  std::vector<std::vector<double>> times(commands.size());
  constexpr int kWarmUp = 10;  // rounds run and not counted: page cache, CPU frequency
  for (int round = -kWarmUp; round < rounds; ++round) {
    for (std::size_t c = 0; c < commands.size(); ++c) {
      double us = run_once(commands[c]);
      if (us < 0) {
        std::fprintf(stderr, "%s: command %zu (%s) failed\n", argv[0], c, commands[c][0]);
        return 1;
      }
      if (round >= 0) times[c].push_back(us);
    }
  }
  for (std::size_t c = 0; c < commands.size(); ++c) {
    std::printf("%zu: median %.1f us  (p25 %.1f, p75 %.1f; %d rounds)  %s\n", c, percentile(times[c], 0.5),
                percentile(times[c], 0.25), percentile(times[c], 0.75), rounds, commands[c][0]);
  }
  return 0;
}
