# As on E2B: a PIL image saved to a path is also displayed (so an agent
# sees the picture it made), and Image.show() opens no viewer (there is no
# display) but does not fail either.


def _e2b_display_saved_images():
    from IPython.display import display
    from PIL import Image, ImageShow

    ImageShow.UnixViewer.show_file = lambda self, path, **options: 0
    save = Image.Image.save
    if getattr(save, "e2b_displays", False):  # installed already
        return

    def save_and_display(image, fp, format=None, **params):
        if isinstance(fp, str):
            display(image)
        return save(image, fp, format, **params)

    save_and_display.e2b_displays = True
    Image.Image.save = save_and_display


try:
    _e2b_display_saved_images()
except ImportError:  # no Pillow in this environment
    pass
del _e2b_display_saved_images
