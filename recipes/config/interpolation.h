// `${...}` interpolation, as OmegaConf resolves it in torchtune's configs:
//   ${output_dir}, ${a.b}, ${a.0} / ${a[0]}      absolute references
//   ${.sibling}, ${..parent_sibling}               relative to the node's own map
//   "${output_dir}/logs"                           inside a string: the result is a string
//   ${oc.env:HOME} / ${oc.env:HOME,default}        environment variables
//   \${not_interpolated}                          escaped
// A value that is exactly one reference takes the referenced value with its type (an int stays an
// int, a map is copied). References to references resolve in turn; cycles and missing keys are
// errors at the referencing node's line and column.
#pragma once

#include <string>
#include <vector>

#include "config/tree.h"

namespace tb::config {

void resolve_interpolations(Node& root, const std::string& file, std::vector<Diagnostic>& diags);

}  // namespace tb::config
