// tuneui is filled by the GUI issue.
namespace tb::ui {}
