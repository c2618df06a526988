// Subcommands of the `tilewise` command. Each registers its options on the CLI11 app and returns the
// process exit code when run (see exit_codes.h).
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace tilewise::cli {

using Runner = std::function<int()>;

Runner add_info_command(CLI::App& app);
Runner add_region_command(CLI::App& app);
Runner add_thumbnail_command(CLI::App& app);
Runner add_bench_command(CLI::App& app);
Runner add_convert_command(CLI::App& app);

}  // namespace tilewise::cli
