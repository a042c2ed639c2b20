# E2B's display formats, which its SDKs read from a result:
# - `e2b/data`: a pandas DataFrame as {column: [values]} (timestamps as ISO
#   strings), the SDK's `result.data`;
# - `e2b/chart`: a matplotlib figure described by E2B's own extractor
#   (PyPI e2b-charts), the SDK's `result.chart`;
# - `application/json` for every list and dict, serialised by orjson so
#   numpy values and non-string keys pass.
# Every formatter runs for every displayed object: each checks that the
# library of its type is loaded before looking further.


def _e2b_add_formats():
    import sys

    from IPython import get_ipython
    from IPython.core.formatters import BaseFormatter, JSONFormatter
    from traitlets import ObjectName, Unicode

    class DataFrameColumns(BaseFormatter):
        format_type = Unicode("e2b/data")
        print_method = ObjectName("_repr_e2b_data_")
        _return_type = (dict, str)

        def __call__(self, obj):
            pandas = sys.modules.get("pandas")
            if pandas is None or not isinstance(obj, pandas.DataFrame):
                return super().__call__(obj)
            iso = lambda v: v.isoformat() if isinstance(v, pandas.Timestamp) else v  # noqa: E731
            return {
                column: [iso(v) for v in values]
                for column, values in obj.to_dict(orient="list").items()
            }

    class FigureChart(BaseFormatter):
        format_type = Unicode("e2b/chart")
        print_method = ObjectName("_repr_e2b_chart_")
        _return_type = (dict, str)

        def __call__(self, obj):
            figure = getattr(sys.modules.get("matplotlib.figure"), "Figure", None)
            if figure is None or not isinstance(obj, figure):
                return super().__call__(obj)
            try:
                from e2b_charts import chart_figure_to_dict

                return chart_figure_to_dict(obj)
            except Exception:
                return {}

    class OrjsonJSON(JSONFormatter):
        def __call__(self, obj):
            if isinstance(obj, (list, dict)):
                try:
                    import orjson

                    options = orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS
                    return orjson.loads(orjson.dumps(obj, option=options)), {"expanded": True}
                except (ImportError, TypeError):
                    pass
            return super().__call__(obj)

    formatter = get_ipython().display_formatter
    formatter.formatters["e2b/data"] = DataFrameColumns(parent=formatter)
    formatter.formatters["e2b/chart"] = FigureChart(parent=formatter)
    formatter.formatters["application/json"] = OrjsonJSON(parent=formatter)


_e2b_add_formats()
del _e2b_add_formats
