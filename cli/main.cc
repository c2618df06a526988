// The `tilewise` command: info, region, thumbnail, bench and convert over the public C++ API.
#include <CLI/CLI.hpp>

#include "commands.h"
#include "exit_codes.h"
#include "tilewise/tilewise.h"

int main(int argc, char** argv) {
  CLI::App app{"tilewise: fast, safe whole-slide image reading"};
  app.require_subcommand(1);
  app.set_version_flag("--version", tilewise::version());
  tilewise::cli::Runner runners[] = {
      tilewise::cli::add_info_command(app),
      tilewise::cli::add_region_command(app),
      tilewise::cli::add_thumbnail_command(app),
      tilewise::cli::add_bench_command(app),
      tilewise::cli::add_convert_command(app),
  };
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return tilewise::cli::kExitUsage;
  }
  const auto subcommands = app.get_subcommands();
  const auto all = app.get_subcommands({});
  for (size_t i = 0; i < all.size(); ++i) {
    if (all[i] == subcommands[0]) return runners[i]();
  }
  return tilewise::cli::kExitUsage;
}
